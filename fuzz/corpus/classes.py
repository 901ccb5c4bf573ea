@decorator(arg)
class A(B, metaclass=M):
    '''Doc.'''
    x: int = 0

    def method(self):
        return super().method()
