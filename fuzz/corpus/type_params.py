type Point[T] = tuple[T, T]
def f[T: int, *Ts, **P](x: T) -> T:
    return x
class C[T]:
    pass
