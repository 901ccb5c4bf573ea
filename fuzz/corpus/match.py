match command:
    case [x, y, *rest]:
        pass
    case {'k': v, **others}:
        pass
    case Point(x=0, y=0) | None:
        pass
    case str() as s if s:
        pass
    case _:
        pass
