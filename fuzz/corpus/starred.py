print(*args, **kwargs)
a, *b = *c, d
return_value = {**a, 'b': 1}
