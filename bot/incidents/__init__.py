"""Incident engine: detectors over the store, a lifecycle with one alert and one
resolution per incident, grouping across W&B, GitHub and Discord, silences and acknowledgements.

Modules: `detectors` (pure detectors and their registry), `engine` (`IncidentEngine`, the
pipeline's Detector; `bot.posts.incidents` words its posts), `service` (reads and acks for
`/incidents`, `/status` and the digest), `silences`. Import from them directly: this package
re-exports nothing, so importing any of them never loads the engine."""
