# error: 2:9
class A[]: pass
