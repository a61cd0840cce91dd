"""Foundations every part may use: errors, time, hashing, the stored-JSON codec, Discord's limits,
the sanitiser of untrusted text, how numbers read, logging, the loop supervisor, the heap's freeze,
single flight. Nothing here imports another part of `bot`."""
