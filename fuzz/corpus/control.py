if a:
    pass
elif b:
    pass
else:
    pass
while x:
    break
else:
    continue
for i in range(3):
    pass
