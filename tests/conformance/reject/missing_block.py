# error: 3:1
if x:
pass
