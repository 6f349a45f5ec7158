"""The browser viewer behind ``hooke serve``: seed 000's interactive page, for every scene.

- :mod:`.server`: the FastAPI app (page, assets, Plotly.js from the installed ``plotly``
  package, one WebSocket per page) and :func:`.server.run` (uvicorn, 127.0.0.1 by default);
- :mod:`.access`: the hosts it answers (DNS rebinding) and the same-origin rule;
- :mod:`.slow_clients`: the time limit on reading a request and the cap on unfinished ones;
- :mod:`.session`: the simulation of one page, stepped with the real integrators, and the
  messages it sends;
- :mod:`.worker`: each session in a process of its own, forked from a warmed-up fork server
  (:mod:`.warm`), and the channel between it and the server;
- :mod:`.protocol`: the commands a page may send, validated by pydantic, at most 64 KiB each;
- ``static/``: the page (controls, a canvas view in 2D or projected 3D, Plotly plots).

Nothing is fetched from outside: the page works with no network.
"""
