# error: 2:1
1 = x
