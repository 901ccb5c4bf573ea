# leading comment
x = 1  # trailing

    # indented comment
def f():  # type: () -> None
    pass
