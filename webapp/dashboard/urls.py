from django.urls import path

from webapp.dashboard import api, architecture_form, assets, downloads, pages, weights_form, weights_pages

urlpatterns = [
    path("", pages.home, name="home"),
    path("assets/plotly.min.js", assets.plotly_js, name="plotly-js"),
    path("searches/", pages.search_list, name="search-list"),
    path("searches/new/", architecture_form.create, name="search-create"),
    path("searches/new/weights/", weights_form.create, name="weights-create"),
    path("searches/<int:search_id>/", pages.search_detail, name="search-detail"),
    path("searches/<int:search_id>/edit/", pages.search_edit, name="search-edit"),
    path("searches/<int:search_id>/table/", pages.individuals_table, name="search-table"),
    path("searches/<int:search_id>/<str:action>/", pages.search_action, name="search-action"),
    path("searches/<int:search_id>/individuals/<int:number>/", pages.individual_detail, name="individual-detail"),
    path("searches/<int:search_id>/download/individuals.csv", downloads.individuals_csv, name="download-csv"),
    path("searches/<int:search_id>/download/events.jsonl", downloads.events_jsonl, name="download-events"),
    path("searches/<int:search_id>/download/best.zip", downloads.best_zip, name="download-best"),
    path("searches/<int:search_id>/download/weights.zip", weights_pages.weights_zip, name="download-weights"),
    path("searches/<int:search_id>/individuals/<int:number>/genome.json", downloads.individual_genome,
         name="download-genome"),
    path("searches/<int:search_id>/individuals/<int:number>/architecture.zip", downloads.individual_zip,
         name="download-individual"),
    path("nodes/", pages.node_list, name="nodes"),
    path("api/searches/", api.searches, name="api-searches"),
    path("api/searches/<int:search_id>/", api.search, name="api-search"),
    path("api/searches/<int:search_id>/snapshot/", api.snapshot, name="api-snapshot"),
    path("api/searches/<int:search_id>/events/", api.events, name="api-events"),
    path("api/searches/<int:search_id>/individuals/", api.individuals, name="api-individuals"),
    path("api/searches/<int:search_id>/pareto/", api.pareto, name="api-pareto"),
    path("api/searches/<int:search_id>/beliefs/", api.beliefs, name="api-beliefs"),
    path("api/searches/<int:search_id>/weights/", weights_pages.figures, name="api-weights"),
    path("api/searches/<int:search_id>/<str:action>/", api.action, name="api-action"),
]
