def f(a, b=1, /, c=2, *args, d, e=3, **kw) -> int:
    return a

async def g():
    await f(1, d=2)
    async for x in y:
        pass
    async with a as b:
        pass
