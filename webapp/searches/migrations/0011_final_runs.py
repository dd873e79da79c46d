# The final training (issue 33): an individual is a candidate of the search or a final run of a top genome.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('searches', '0010_attempts'),
    ]

    operations = [
        migrations.AddField(
            model_name='individual',
            name='role',
            field=models.CharField(choices=[('search', 'search'), ('final', 'final')], db_index=True, default='search', help_text='search: asked by the strategy; final: a final run (webapp.control.final), never told to the strategy.', max_length=8),
        ),
    ]
