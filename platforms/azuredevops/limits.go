package azuredevops

// commentLimit is the comment size the daemon keeps to on Azure DevOps.
// Evidence is missing for work item comments: Microsoft documents no limit
// for them (the work tracking limits page names 1M characters for long text
// fields), and the limit users report, 150,000 characters, is for pull
// request discussion comments (runatlantis/atlantis#1585). 32,767 is the
// conservative figure the daemon assumes until a real refusal says more.
const commentLimit = 32767

// CommentLimit is the largest comment body the daemon sends to Azure
// DevOps, in characters.
func (t *Tracker) CommentLimit() int { return commentLimit }
