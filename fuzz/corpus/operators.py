a = b ** c // d % e @ f
b <<= 1; b >>= 2; b **= 3; b //= 4; b @= m
c = not a and b or c
d = a is not b and c not in d
e = ~a | b & c ^ d
f = a < b <= c != d == e >= f > g
