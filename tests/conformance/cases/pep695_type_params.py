type Point = tuple[float, float]
type ListOrSet[T] = list[T] | set[T]
def first[T](items: list[T]) -> T:
    return items[0]
class Box[T: (int, str), *Ts, **P](Base):
    pass
async def run[R](f: Callable[P, R]) -> R: ...
