"""What a running process is made of: the data flow (`pipeline`), the runtime it holds, the
composition root (`wiring`), the background loops (`scheduler`, `rounds`) and the offline demo."""
