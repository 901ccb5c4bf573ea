@property
@functools.lru_cache(maxsize=None)
@a.b[c]
def f():
    pass
