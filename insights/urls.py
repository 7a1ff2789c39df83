from django.urls import path

from . import views

app_name = "insights"
urlpatterns = [
    path("", views.index, name="index"),
    path("<str:name>/", views.corpus_detail, name="corpus"),
    path("<str:name>/gaps/<int:gap_id>/", views.gap_detail, name="gap"),
    path("<str:name>/feedback/<int:feedback_id>/", views.feedback_detail, name="feedback"),
]
