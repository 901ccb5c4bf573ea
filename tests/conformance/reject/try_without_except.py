# error: 4:1
try:
    pass
x = 1
