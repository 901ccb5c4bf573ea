# error: 2:12
def f(a=1, b): pass
