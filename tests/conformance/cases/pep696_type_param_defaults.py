def f[T = int, *Ts = *tuple[int], **P = [int]](): pass
class C[T: int = bool]: pass
type A[T = str] = T
