# error: 2:6
from import x
