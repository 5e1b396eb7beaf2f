// The topic contract (topics, requests, payloads, errors) is defined in RestockPipeline, which needs no
// broker; a library user imports RestockMQTT alone.
@_exported import RestockPipeline
