import a.b.c as d, e
from . import f
from ..g import (h as i, j)
from k import *
