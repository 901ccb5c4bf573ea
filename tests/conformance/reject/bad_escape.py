# error: 2:6
x = "\N{NO SUCH NAME}"
