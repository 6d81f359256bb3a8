"""placeholder"""
def to_zarr(*a, **k):
    raise NotImplementedError


def from_zarr(*a, **k):
    raise NotImplementedError


