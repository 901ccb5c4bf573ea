# error: 2:8
f(a=1, b)
