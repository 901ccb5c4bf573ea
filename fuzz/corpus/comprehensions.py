a = [x for x in y if x]
b = {k: v for k, v in d.items()}
c = {x for x in y}
d = (x async for x in y)
