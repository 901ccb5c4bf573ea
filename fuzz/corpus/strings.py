a = 'single' "double"
b = b'bytes\x00' rb'raw\d'
c = '''triple
quoted'''
d = u'\N{BULLET}\u00e9\U0001F600\ud800'
e = 'line \
continued'
