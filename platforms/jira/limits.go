package jira

// jiraCommentLimit is Jira's largest comment body: "The entered text is
// too long. It exceeds the allowed limit of 32767 characters." (400;
// jenkinsci/jira-plugin#667, prometheus-community/jiralert#41).
const jiraCommentLimit = 32767

// CommentLimit is the size of comment text the daemon may hand to Comment,
// in characters: half of Jira's limit, because the conversion to wiki markup
// (Data Center) escapes characters and at most doubles the text, and the
// conversion to ADF (Cloud) adds a little per block.
func (t *Tracker) CommentLimit() int { return jiraCommentLimit / 2 }
