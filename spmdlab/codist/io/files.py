"""placeholder"""
def read_files(*a, **k):
    raise NotImplementedError


