if a:
	if b:
		pass
	else:
		pass
