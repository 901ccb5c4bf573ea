# error: 2:1
f() += 1
