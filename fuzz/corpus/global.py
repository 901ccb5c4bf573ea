def f():
    global a, b
    def g():
        nonlocal c
    del a[0], b.c
    assert a, 'msg'
    yield from g()
    x = yield
