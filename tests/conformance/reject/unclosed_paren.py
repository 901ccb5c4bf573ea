# error: 2:5
x = (1,
