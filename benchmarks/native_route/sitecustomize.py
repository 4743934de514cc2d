"""The rehearsal's native route (benchmarks/rehearsal.py --route native): every Python process started
with this directory on PYTHONPATH sends DSPy's native OpenAI and Anthropic requests (its bundled lm15
client, the route a run without --api-base takes) to $EIR_REHEARSAL_ENDPOINT instead of the provider.
Only the address changes, below everything the harness does per call (TLS aside)."""

import os

_URL = os.environ.get("EIR_REHEARSAL_ENDPOINT")
_APIS = ("https://api.openai.com/v1", "https://api.anthropic.com/v1")

if _URL:
    import dataclasses

    from dspy._vendor.lm15.transports._sync import StdlibTransport

    _stream = StdlibTransport.stream

    def _to_endpoint(self, request):
        api = next((a for a in _APIS if request.url.startswith(a)), None)
        if api:
            request = dataclasses.replace(request, url=_URL + "/v1" + request.url[len(api):])
        return _stream(self, request)

    StdlibTransport.stream = _to_endpoint
