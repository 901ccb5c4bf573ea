x = f"{d["key"]}"
y = f"{f"{a}"}!"
z = f"{'\n'.join(lines)}"
