# error: 2:5
if x
    pass
