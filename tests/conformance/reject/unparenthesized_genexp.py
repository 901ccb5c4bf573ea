# error: 2:3
f(x for x in y, 1)
