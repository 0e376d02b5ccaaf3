"""`deblur serve`: a local web page and an HTTP API in one process, over the same code as `deblur predict`.

app.py (the FastAPI app, its page and guards), routes.py (the API), limits.py (what a request may ask),
service.py (one photo: check, deblur, encode), work.py (one deblur at a time, a bounded line), card.py (what the
model's card says), server.py (uvicorn, graceful stop), static/ (the page: HTML, CSS and JavaScript, no CDN).
"""
