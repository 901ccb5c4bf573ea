# error: 2:6
x = 1)
