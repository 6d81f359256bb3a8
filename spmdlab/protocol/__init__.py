"""What the client and the labs say to each other: typed requests and replies
(:mod:`.messages`), the framing, channels and handshake they travel by (:mod:`.channel`),
how user code and values are pickled (:mod:`.shipping`), the value-type hooks
(:mod:`.values`) and the generic functions the client asks the labs to call
(:mod:`.calls`). Imports nothing of spmdlab above layer 0."""
