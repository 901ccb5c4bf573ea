# error: 2:8
x = f"{*a}"
