try:
    pass
except ValueError as e:
    raise RuntimeError() from e
except* TypeError:
    pass
else:
    pass
finally:
    pass
