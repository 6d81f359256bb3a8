"""Layouts: pure index math, numpy only (no MPI, no client, no array class): the shared
base (:mod:`.base`), MATLAB's codistributors (:mod:`.codistributor`) and the extended
layouts (:mod:`.blocks`, :mod:`.chunks`), regions (:mod:`.regions`), redistribution plans
(:mod:`.plan`) and the pieces they move (:mod:`.moves`), and pictures (:mod:`.pictures`)."""
