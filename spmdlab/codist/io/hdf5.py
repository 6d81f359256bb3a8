"""placeholder"""
def to_hdf5(*a, **k):
    raise NotImplementedError


def from_hdf5(*a, **k):
    raise NotImplementedError


