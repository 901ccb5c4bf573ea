# error: 2:5
x = "a" b"b"
