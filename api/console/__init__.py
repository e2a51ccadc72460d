"""The web console at `/console/` (issue #17): server-rendered pages over the same store functions and the
same keys as the API. `install(app, settings)` adds its routes and its static files (htmx, the style
sheet), served by the app itself: no CDN, no JavaScript build step."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from api.console.routes import HERE, new_secret, router
from api.console.session import Signer
from shared.settings import Settings


def install(app: FastAPI, settings: Settings) -> None:
    app.state.console_signer = Signer(
        settings.console_secret or new_secret(), session_max_age_s=settings.console_session_hours * 3600
    )
    app.include_router(router)
    app.mount("/console/static", StaticFiles(directory=HERE / "static"), name="console-static")
