"""placeholder"""
def write_ef(path, offsets, upper):
    pass
