f = lambda x, *a, y=1, **k: (x, a, y, k)
g = lambda: 0
