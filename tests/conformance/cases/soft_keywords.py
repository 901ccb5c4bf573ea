type = 1
match = type
type(x)
match x:
    case type: pass
