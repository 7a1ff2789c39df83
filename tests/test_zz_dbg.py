from django.urls import reverse
from tests.test_admin_fixes import *  # noqa

def test_dbg(client, staff, corpus):
    response = client.post(reverse("admin:corpus_corpus_changelist"),
                           {"action": "propose_fixes", "_selected_action": [corpus.pk]}, follow=True)
    import re
    print(re.findall(r'<ul class="messagelist">.*?</ul>', response.content.decode(), re.S))
    print(response.redirect_chain)
    page = client.get(reverse("admin:corpus_fixproposal_changelist")).content.decode()
    i = page.find('id="changelist-filter"'); print(page[i:i+1500])
