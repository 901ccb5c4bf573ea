if a:
        b
    c
