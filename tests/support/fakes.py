"""Stand-ins for tests of pure logic (no MPI, no lab)."""


class FakePool:
    """Just what a handle needs to exist; any request to the labs would fail."""

    def __init__(self, numlabs: int, state: str = "idle"):
        self.numlabs, self.state, self.generation = numlabs, state, 1

    def free_later(self, key, generation):
        pass

    def request(self, *args):
        raise AssertionError("a display must not ask the labs")
