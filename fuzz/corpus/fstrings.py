name = 'w'
s = f'hello {name!r:>{width}} {{literal}} {x=}'
t = f"{d["key"]}"
u = f'{f'{f'{1}'}'}'
v = rf'\d{x}'
