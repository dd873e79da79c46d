from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("datasets", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="dataset",
            name="archive",
            field=models.CharField(blank=True, default="", max_length=1000,
                                   help_text="The archive workers fetch it as, by digest (the upload, or one made of "
                                             "the path on a first fetch); empty until then."),
        ),
    ]
